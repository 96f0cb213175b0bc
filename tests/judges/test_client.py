"""The judge client's settings: from `--metadata`, then the environment; bad ones named."""

import pytest

from evalpack.judges.client import JudgeSettings


def test_judge_settings_from_metadata_then_environment():
    env = {"EVALPACK_JUDGE_MODEL": "env-model", "EVALPACK_JUDGE_CONCURRENCY": "3"}
    resolved = JudgeSettings.resolve({"judge_model": "meta-model"}, environ=env)
    assert resolved.model == "meta-model" and resolved.concurrency == 3
    assert JudgeSettings(base_url="http://h:1/v1/").url == "http://h:1/v1/chat/completions"
    assert JudgeSettings(base_url="http://h:1/v1/chat/completions").url.count("chat") == 1
    with pytest.raises(ValueError, match="judge_modle"):
        JudgeSettings.resolve({"judge_modle": "x"})
    with pytest.raises(ValueError, match="concurrency"):
        JudgeSettings.resolve({"judge_concurrency": "many"})
    with pytest.raises(ValueError, match="not the key itself") as error:
        JudgeSettings.resolve({"judge_api_key_env": "sk-proj-abc123"})
    assert "sk-proj" not in str(error.value)

"""A small Llama-architecture chat model with random weights and a byte-level tokenizer, built
on the spot with no download (for `benchmarks/gpu_node.sh`): `python tiny_model.py DIR`.

Its answers are noise; what it checks is the path: lm-eval's hf/vLLM backends load it, apply
its chat template, generate on the GPU and the pack scores what comes back.
"""

from __future__ import annotations

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL = ["<|end|>", "<|pad|>"]


def build(folder: str) -> None:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: number for number, symbol in enumerate(sorted(alphabet))}
    for token in SPECIAL:
        vocab[token] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|end|>", pad_token="<|pad|>", bos_token="<|end|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=16384,
        eos_token_id=vocab["<|end|>"],
        bos_token_id=vocab["<|end|>"],
        pad_token_id=vocab["<|pad|>"],
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    # the last line of the log is what gpu_node.sh's summary shows (not a progress bar)
    print(f"\n{folder}: {model.num_parameters():,} parameters, vocabulary {len(vocab)}", flush=True)


if __name__ == "__main__":
    build(sys.argv[1])

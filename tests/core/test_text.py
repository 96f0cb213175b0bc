from evalpack.core.text import cut_at_stops


def test_cut_at_earliest_stop():
    assert cut_at_stops("abc\n#x\nclass y", ["\nclass", "\n#"]) == "abc"
    assert cut_at_stops("abc", []) == "abc"

"""Package data: few-shot exemplar files, installed as `evalpack.fewshot_data`."""

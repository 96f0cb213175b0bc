"""Answer extraction and metrics, pure functions of strings (OLMES's rules, quirks included):
one module per family (math_extract + math_answers, bbh_answers, gsm8k_answers, deepmind_answers
+ sympy_guard, drop_f1, popqa_match, multiple_choice, mc_cot_answers, mmlu_pro_answers,
code_sanitize, code_answers: the code of an olmo3:adapt answer, thinking + thinking_switch:
a reasoning model's thinking block, olmo3_answers + line_scans: OLMES's olmo3 answer cascade
for the rule-scored `*_olmo3` tasks, in linear time), ifeval/ (the checkers and their NLTK
data), ifbench/ (the pack's own IFBench checkers and their NLTK data), alpaca_judge/
(annotator, metrics), safety/ (WildGuard's prompt and parse, safety-eval's verdicts, judging),
sampling_metrics (pass@k, maj@k) and paired (paired bootstrap, sign-flip test)."""

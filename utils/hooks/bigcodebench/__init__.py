"""BigCodeBench: its hooks and what its sandbox jobs run. The folders are the trust boundary.

- on the host (this folder): `task` (the hooks: prompts, jobs, verdicts), `answerless` +
  `prune` + `blanks` (the test without its answers, for the recording run), `libs` (the pinned
  libraries' folder), `sources` (the programs of the jobs, made of the modules below),
  `rounds` (recordings and replays in rounds, the record capped before it is read), `unsafe`
  (tests that run program-written data as code: never replayed);
- `job/`: shipped as source into a job's process, where the candidate's code runs (the runner,
  its guard, worker and values halves, the record and its codec);
- `replay/`: shipped into the replay's process, which runs the genuine test on a record with no
  candidate code;
- `trusted/`: shipped into the sandbox's trusted side (the check on a runner's report; the
  slot's zygote prelude).

What is shipped imports only the standard library and modules shipped with it (job/ only
job/; replay/ job/ and replay/; trusted/ nothing): `tests/test_package_shape.py` checks it.
"""

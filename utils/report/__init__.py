"""Reports of leaderboards and runs: report (data), coverage (failed / not run), compare
(baseline deltas, paired tests), render (Markdown, HTML) + plots. Reads what the leaderboard
writes (`leaderboard.rundirs`); imports core, scoring, leaderboard."""

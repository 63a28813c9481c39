"""Writers of validated data: TREC, BEIR, FollowIR/MTEB and InfoSearch layouts, JSONL and reports."""

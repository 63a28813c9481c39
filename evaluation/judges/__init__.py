"""Automatic judges IFJudge runs itself: a chat model behind any OpenAI-compatible endpoint, or a
local sentence-transformers bi-encoder / cross-encoder; their answers are judge labels, stored
apart from the human labels (:mod:`storage.judge_labels`).

- :mod:`.questions` -- THE table: per question type, the prompt versions (the seeds' own where
  they publish one), the answer choices and schema, how an answer is read and scored;
- :mod:`.tokens` -- the token-counting rule of the estimate shown before a run;
- :mod:`.chat` -- the OpenAI-compatible chat judge (structured answers, log-probabilities);
- :mod:`.local` -- bi-encoder similarity and cross-encoder scores, and the threshold chosen on the
  human-labelled sample;
- :mod:`.runs` -- a judge run's configuration, its items, the estimate, and how it runs (the
  worker's job of kind ``judge``, resumable: an item is judged once per run);
- :mod:`.stored` -- the stored answers in the shapes the estimates and INSTFOL read.
"""

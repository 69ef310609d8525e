"""Retrieval quality on LongMemEval_S, one question's haystack (one user's chat history)
at a time: ``data`` reads the questions, their sessions and evidence turns; ``measures``
holds the benchmark's own measures (recall_any, recall_all and NDCG at k, at session and
turn level) and evidence recall at a token budget; ``baselines`` ranks a haystack without
memq (BM25 and dense over whole sessions, dense and hybrid over turns), so memq's figures
have published and local reference points. All pure: no Redis, workers or database.
"""

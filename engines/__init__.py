"""Everything that thinks: LLM backends, retrieval, pipelines, judges, metrics, readers.

Plain async Python. Never imports Textual (SPEC §2).
"""

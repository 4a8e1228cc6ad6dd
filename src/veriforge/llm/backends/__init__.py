"""Model back-ends: OpenAI-compatible HTTP, local transformers, scripted replies.

Each module imports its heavy dependency (``openai``, ``torch``/``transformers``) only inside
itself, so importing :mod:`veriforge.llm` stays cheap.
"""

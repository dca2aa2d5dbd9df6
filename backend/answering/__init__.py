"""Turning ranked sources into answers: prompts, citations, streaming, figures, summaries, fallbacks.

Pure logic on top of the chat client; callers pass the sources, figures and text in (no database here).
Nothing here crashes on a model failure: the answer falls back to quoting the best passages, with a
one-line notice that says why. LaTeX is passed through exactly as the model or the document wrote it.

One module per concern: ``prompts`` (every prompt: numbered sources, history, the standalone follow-up
question, the question's translation), ``citations``, ``answers`` (the streamed model answer),
``extractive`` (answers that quote passages), ``figures`` (questions about one figure), ``summaries``;
``language`` and ``truncation`` are shared helpers.
"""

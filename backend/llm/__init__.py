"""The language models: the one OpenAI-compatible transport (retries, errors, secret scrubbing), the
shared rate limiter, and the chat and vision clients."""

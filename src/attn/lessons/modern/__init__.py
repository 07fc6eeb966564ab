"""Multi-head attention as today's models run it (notebook 14): what sharing keys and values,
a sliding window and a latent cache change in the KV cache, and what they cost.

``cache_budget``: the cache's bytes per token from published configurations (Llama 2, Llama 3,
Mistral, Falcon, DeepSeek-V2) and at the chapter's d_model = 512, h = 8.
``sharing``: a small model trained with 8, 4, 2 and 1 heads of keys and values, its quality
against its cache.
``windows``: sliding-window attention: the receptive field layer by layer, the cache that stops
growing, what a token no longer sees directly.
``latent``: multi-head latent attention (DeepSeek-V2) as a worked computation: the cached
latent, the keys and values rebuilt from it, the absorption of W_uk into the query, and why
rotary positions need a key of their own.
"""

"""Model backends: `replay` (offline), the served-model backends and the `resumable` wrapper
(`registry.register()` registers them all with lm-eval)."""

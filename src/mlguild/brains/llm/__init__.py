"""The LLM brain: prompts, the conversation with the model, and the community cycle."""

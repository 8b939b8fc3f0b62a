"""Chapter 8's stored runs: GRPO on the small GPT and its controls."""

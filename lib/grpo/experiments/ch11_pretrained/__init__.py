"""Chapter 11's stored runs on SmolLM2-135M-Instruct, and its recipe as a TRL launch."""

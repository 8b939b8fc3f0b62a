"""Chapter 7's stored runs: the worked-solution SFT model and the answer-only control."""

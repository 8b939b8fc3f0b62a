"""Chapter 6's stored runs on LunarLander-v3: the main comparison, the credit-assignment study
and the gradient-noise study."""

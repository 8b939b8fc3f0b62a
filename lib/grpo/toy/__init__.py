"""The toy of chapters 1-4: the lava-leap game (``lava``) and REINFORCE, PPO and GRPO on it
(``algos``)."""

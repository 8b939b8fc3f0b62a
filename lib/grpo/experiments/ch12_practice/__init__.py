"""Chapter 12's stored runs: GRPO's common failures and their fixes, each shown by a run."""

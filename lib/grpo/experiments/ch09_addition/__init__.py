"""Chapter 9's stored grids of two-digit-addition jobs."""

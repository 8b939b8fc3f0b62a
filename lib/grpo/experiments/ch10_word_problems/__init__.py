"""Chapter 10's stored long runs on the GSM8K-style word problems."""

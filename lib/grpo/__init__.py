"""GRPO from scratch: the shared code behind the book's chapters.

Modules: ``lava`` (the lava-leap game and its exact evaluator), ``plots`` (the book's figure
style), ``results`` (each chapter's headline figures in data/results/).
"""
__version__ = "0.1.0"

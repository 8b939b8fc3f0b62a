"""The book's helpers, apart from the library and the experiments: what a page needs to show and
record its results.

    display       showing lib source and computed tables in the chapters
    plots         the book's figure style, palette, floor drawings and animations
    live          slider panels for chapters 2-4 (Jupyter) and their static grid figures (the book)
    results       each chapter's headline figures in data/results/
    reproduction  published figures (data/published.json) against the registry: the report's
                  verdicts
    colab         the chapters' first cell: installs the lib when a notebook runs outside the repo
    machine       the machine's fingerprint, which ``make test`` prints first
    exercises     the checks behind the chapters' exercises: one line, ``correct`` or the mistake
    exercise_texts  the exercises' tasks, stubs, solutions and minutes, and the notebook cells
                  ``.ci/insert_exercises.py`` writes from them
"""

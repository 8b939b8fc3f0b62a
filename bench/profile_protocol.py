"""Profile one training run of each algorithm (cProfile): where does the protocol's time go?"""
import cProfile
import pstats

from grpo.toy import algos, lava


def protocol():
    for algo in ("REINFORCE", "PPO", "GRPO"):
        algos.TRAINERS[algo](0)


if __name__ == "__main__":
    lava.held_out_floors(), lava.ceiling()
    profiler = cProfile.Profile()
    profiler.enable()
    protocol()
    profiler.disable()
    pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(12)

'''The chapters' exercises, in one place: for each, its task (markdown), the stub a notebook
carries (a function that raises NotImplementedError), the one-line check, the solution, and the
minutes a student needs (a stated estimate, not a measurement).

Three readers share this module, so a notebook, its test and the course time cannot drift apart:
``.ci/insert_exercises.py`` writes each chapter's "Exercises" section from ``exercise_cells``
(``with_exercises`` replaces the cells it wrote before, recognised by their ``grpo_exercise``
metadata); ``tests/test_exercises.py`` runs every stub and solution against its check, here and
as inserted in the notebooks; and ``exercise_minutes`` gives the landing page each chapter's
exercise time. The checks themselves are ``grpo.book.exercises``.

A solution is shown folded under its check, as a ``{admonition}`` with the ``dropdown`` class
(the form chapters 2 and 4 already use): the built site folds it with sphinx-togglebutton, and
JupyterLab's MyST renderer folds it too. Its code is a fenced Python block inside a colon fence.
The tasks write no digits in chapters 8 and 12, whose prose is at the course's limit of distinct
numbers (``tests/chapter_size.py``).
'''
from __future__ import annotations

import ast
from dataclasses import dataclass
from textwrap import dedent

SECTION_TITLE = "## Exercises"
SECTION_INTRO = ("Each exercise asks for a few lines of this chapter's code. Write them in the "
                 "cell that raises\n`NotImplementedError`, then run the check below it: it prints "
                 "`correct`, or names the\nmistake it found. The solution is folded under each "
                 "check. Try first.")
MARKER = "grpo_exercise"        # the cell metadata key that marks the cells this module writes


@dataclass(frozen=True)
class Exercise:
    """One exercise: where it goes, what it asks, and the code around it."""
    chapter: int
    letter: str                 # "A", "B", ...: its place in the chapter's section
    title: str
    minutes: int                # a student's time for it: a stated estimate
    task: str                   # markdown
    stub: str                   # the function as the notebook ships it
    check: str                  # one line: the check called on the function
    solution: str               # the same function, written; shown folded
    uses: tuple = ()            # names the stub takes from grpo.book.exercises besides its check
    imports: tuple = ()         # other import lines the stub needs

    @property
    def function(self) -> str:
        """The name of the function the reader writes (the stub's)."""
        return next(n.name for n in ast.parse(self.stub).body if isinstance(n, ast.FunctionDef))

    @property
    def checker(self) -> str:
        """The name of the check (``check_...``) that the check line calls."""
        return ast.parse(self.check).body[0].value.func.id


def _code(text: str) -> str:
    return dedent(text).strip("\n")


def _prose(text: str) -> str:
    return dedent(text).strip()


EXERCISES = (
    # ------------------------------------------------------------------------ 1 the lava game
    Exercise(1, "A", "the exact score, by the backward sweep", 15, _prose("""
        Write the backward sweep yourself. `my_exact_score(floor, q)` gets a floor (40 tiles,
        `True` for lava) and `q`, the LEAP probability on each tile. It returns the expected score
        from tile 0. Fill $V$ from tile 38 down to tile 0 with the recursion above: $V(t) = t/39$ on
        lava, and $V(t) = 1$ at or past tile 39. A LEAP from tile 38 lands past the last tile, so
        give your array room. Try it on a floor of your own first, such as lava on tiles 10 and 11
        with `q = np.full(40, 0.5)`. The check compares your sweep with `tile_values` on seven
        floors."""), _code('''
        def my_exact_score(floor, q):
            """The expected score from tile 0 of a bot that LEAPs with probability q[t] on tile t.

            floor: (40,) bool, True on lava; q: (40,) LEAP probabilities. Return one number, V(0).
            """
            raise NotImplementedError
        '''), "check_exact_score(my_exact_score)", _code('''
        import numpy as np


        def my_exact_score(floor, q):
            """The expected score from tile 0, by one sweep backwards over the tiles."""
            V = np.ones(42)                  # tiles 39, 40 and 41: the dock, or past it
            for t in range(38, -1, -1):
                if floor[t]:
                    V[t] = t / 39            # the run ends in lava on tile t
                else:
                    V[t] = (1 - q[t]) * V[t + 1] + q[t] * (V[t + 2] + V[t + 3]) / 2
            return V[0]
        ''')),
    Exercise(1, "B", "the best any bot can do", 10, _prose("""
        `omniscient_score` runs the same sweep but takes the better move on every tile. Write it:
        `my_omniscient_score(floor)` returns the best expected score from tile 0 of a bot that
        knows its tile and the whole floor. Start from your sweep above and replace the policy's
        mix of STEP and LEAP by the larger of the two. Then try a floor with one two-tile channel:
        what does the best bot score there, and why can no policy do better?"""), _code('''
        def my_omniscient_score(floor):
            """The best expected score from tile 0 of a bot that sees the whole floor.

            floor: (40,) bool, True on lava. Return one number.
            """
            raise NotImplementedError
        '''), "check_omniscient_score(my_omniscient_score)", _code('''
        import numpy as np


        def my_omniscient_score(floor):
            """The sweep of my_exact_score, taking the better move on every tile."""
            V = np.ones(42)
            for t in range(38, -1, -1):
                step, leap = V[t + 1], (V[t + 2] + V[t + 3]) / 2
                V[t] = t / 39 if floor[t] else max(step, leap)
            return V[0]
        ''')),
    # ------------------------------------------------------------------------ 2 REINFORCE
    Exercise(2, "A", "the gradient of log π, by hand", 10, _prose(r"""
        Write the closed form from the update above. `my_grad_log_pi(W, s, a)` gets the weights
        $W$ (4 × 2), one sensor row `s` and a move `a` (0 for STEP, 1 for LEAP). It returns
        $\nabla_W \log\pi(a\mid s) = s\,(\mathbf{e}_a - \pi(\cdot\mid s))^\top$ as a 4 × 2 array.
        Compute $\pi$ as a max-shifted softmax of `s @ W`. The check compares your gradient with
        `grad_log_pi` at $W = 0$ and at three random $W$."""), _code('''
        def my_grad_log_pi(W, s, a):
            """d log pi(a|s) / dW for the softmax policy pi(.|s) = softmax(s @ W).

            W: (4, 2); s: (4,) one sensor row; a: 0 (STEP) or 1 (LEAP). Return a (4, 2) array.
            """
            raise NotImplementedError
        '''), "check_grad_log_pi(my_grad_log_pi)", _code('''
        import numpy as np


        def my_grad_log_pi(W, s, a):
            """s (e_a - pi(.|s))^T: the outer product of the sensors and the move's surprise."""
            logits = s @ W
            pi = np.exp(logits - logits.max())
            pi = pi / pi.sum()
            return np.outer(s, np.eye(2)[a] - pi)
        ''')),
    Exercise(2, "B", "one run's push", 10, _prose(r"""
        Now one run's whole push. `my_reinforce_gradient(W, S, moves, score)` gets the sensor rows
        `S` and the moves of one run, and the run's score. It returns the mean over the run's steps
        of the score times $\nabla_W \log\pi(a_n\mid s_n)$: what `policy_gradient` returns when
        every step's weight is the run's score. Use your `my_grad_log_pi` or the library's
        `grad_log_pi`. Then look at the sign of your answer's entries for a run that fell into
        lava: which moves does it make more likely?"""), _code('''
        def my_reinforce_gradient(W, S, moves, score):
            """REINFORCE's ascent direction from one run: mean over its steps of score * grad.

            W: (4, 2); S: (N, 4) sensor rows; moves: (N,) 0/1; score: the run's score.
            Return a (4, 2) array.
            """
            raise NotImplementedError
        '''), "check_reinforce_gradient(my_reinforce_gradient)", _code('''
        import numpy as np

        from grpo.toy.algos import grad_log_pi


        def my_reinforce_gradient(W, S, moves, score):
            """Every step of the run weighted by the run's score, then the mean over its steps."""
            grads = [grad_log_pi(W, s, a) for s, a in zip(S, moves)]
            return score * np.mean(grads, axis=0)
        ''')),
    # ------------------------------------------------------------------------ 3 PPO
    Exercise(3, "A", "the clipped objective", 10, _prose(r"""
        Write PPO's objective for each step. `my_clipped_objective(rho, adv, eps)` gets the ratios
        $\rho_n$ and the advantages $A_n$ as NumPy arrays, and $\epsilon$. It returns
        $\min\big(\rho_n A_n, \operatorname{clip}(\rho_n, 1-\epsilon, 1+\epsilon)\,A_n\big)$ for
        each step. `np.clip` and `np.minimum` are all you need. The check runs the six cases above
        and four more against `clipped_surrogate`, the library's torch version, which chapters 6
        and 8 use."""), _code('''
        def my_clipped_objective(rho, adv, eps):
            """Each step's min(rho * A, clip(rho, 1 - eps, 1 + eps) * A).

            rho, adv: (N,) arrays; eps: the clip's half-width. Return an (N,) array.
            """
            raise NotImplementedError
        '''), "check_clipped_surrogate(my_clipped_objective)", _code('''
        import numpy as np


        def my_clipped_objective(rho, adv, eps):
            """The pessimistic of the two terms, step by step."""
            return np.minimum(rho * adv, np.clip(rho, 1 - eps, 1 + eps) * adv)
        ''')),
    Exercise(3, "B", "which steps lose their gradient", 10, _prose("""
        Where the clipped term wins, a step contributes no gradient. `my_clipped_steps(rho, adv,
        eps)` returns `True` for those steps and `False` for the rest. Read the six cases above
        first. A step outside the band *against* its advantage's direction is a correction, and it
        keeps its gradient. The check compares your answer with `clip_mask`, step by step."""),
             _code('''
        def my_clipped_steps(rho, adv, eps):
            """True where min(rho * A, clip(rho, 1 - eps, 1 + eps) * A) takes the flat branch.

            rho, adv: (N,) arrays; eps: the clip's half-width. Return an (N,) bool array.
            """
            raise NotImplementedError
        '''), "check_clipped_steps(my_clipped_steps)", _code('''
        def my_clipped_steps(rho, adv, eps):
            """Past the band in the advantage's own direction: pushed far enough already."""
            return ((adv > 0) & (rho > 1 + eps)) | ((adv < 0) & (rho < 1 - eps))
        ''')),
    # ------------------------------------------------------------------------ 4 GRPO
    Exercise(4, "A", "the group advantage", 10, _prose(r"""
        Write GRPO's one new piece. `my_group_advantages(scores)` gets one group's scores and
        returns each run's advantage,
        $A_i = (r_i - \operatorname{mean} r)/(\operatorname{std} r + 10^{-8})$. Two details decide
        whether it matches `grpo_advantages`. Which std does the book use, the population one or
        the sample one? And a group whose scores are all equal must give exactly 0, never NaN. The
        check includes such groups."""), _code('''
        def my_group_advantages(scores):
            """Each run's score standardised within its group.

            scores: (G,) one group's scores. Return a (G,) array of advantages.
            """
            raise NotImplementedError
        '''), "check_group_advantages(my_group_advantages)", _code('''
        import numpy as np


        def my_group_advantages(scores):
            """(r - mean) / (population std + 1e-8); exactly 0 when every score is the same."""
            r = np.asarray(scores, dtype=float)
            if np.all(r == r[0]):
                return np.zeros_like(r)
            return (r - r.mean()) / (r.std() + 1e-8)
        ''')),
    Exercise(4, "B", "how the update averages over steps", 10, _prose(r"""
        How the update averages over its steps changes what it learns: the lab notes show
        the $1/N$ average pushing some seeds into the always-LEAP corner, and the live panel
        lets you compare three ways. `step_divisors` gives each step its divisor $d_n$.
        Write it: `my_step_divisors(run, G, averaging)` gets the run of every step (as in
        `group.run`), the group size $G$, and one of `"batch_steps"`, `"per_answer"` or
        `"constant"`. It returns one divisor per step: $N$, the group's number of steps, for
        every step; $G\,|o_i|$ for a step of run $i$; or $G \times 39$, the longest possible
        group. `np.bincount` counts each run's steps."""), _code('''
        def my_step_divisors(run, G, averaging):
            """Each step's divisor d_n in the update's sum of A * rho * grad log pi / d_n.

            run: (N,) the run (0 .. G-1) of each step; G: the group size; averaging:
            "batch_steps", "per_answer" or "constant". Return an (N,) array.
            """
            raise NotImplementedError
        '''), "check_step_divisors(my_step_divisors)", _code('''
        import numpy as np


        def my_step_divisors(run, G, averaging):
            """N, G times the run's length, or G times the longest run."""
            run = np.asarray(run)
            if averaging == "batch_steps":
                return np.full(len(run), len(run))
            if averaging == "per_answer":
                return G * np.bincount(run, minlength=G)[run]
            return np.full(len(run), G * 39)
        ''')),
    # ------------------------------------------------------------------------ 5 k3
    Exercise(5, "A", "k1, k2 and k3", 10, _prose(r"""
        Write the three estimators from the two log-probabilities of the sampled tokens.
        `my_kl_estimates(logp, logp_ref)` gets NumPy arrays and returns the tuple `(k1, k2, k3)`,
        one estimate per token. Start from $u = \log x$ = `logp_ref - logp`. Compute $k_3$ so that
        it stays accurate when $u$ is tiny: the check also tries $u = 10^{-8}$."""), _code('''
        def my_kl_estimates(logp, logp_ref):
            """The one-sample estimates k1, k2 and k3 of KL(pi_theta || pi_ref), token by token.

            logp, logp_ref: (N,) log-probabilities of the sampled tokens under pi_theta and
            pi_ref. Return a tuple of three (N,) arrays.
            """
            raise NotImplementedError
        '''), "check_kl_estimates(my_kl_estimates)", _code('''
        import numpy as np


        def my_kl_estimates(logp, logp_ref):
            """-log x, (log x)^2 / 2 and x - log x - 1, with x = pi_ref / pi_theta."""
            u = logp_ref - logp
            return -u, u**2 / 2, np.expm1(u) - u
        ''')),
    Exercise(5, "B", "k3 is unbiased, checked", 10, _prose(r"""
        The vocabulary is finite, so the mean of $k_3$ over tokens drawn from $\pi_\theta$ can be
        computed exactly. `my_expected_k3(p_theta, p_ref)` gets two distributions over the same
        vocabulary and returns $\sum_a \pi_\theta(a)\,k_3(a)$. The check compares it with
        `exact_kl(p_theta, p_ref)` on three pairs from `random_pair`, from nearly equal to far
        apart. If $k_3$ is unbiased, the two agree to the last digits."""), _code('''
        def my_expected_k3(p_theta, p_ref):
            """The exact mean of k3 over tokens drawn from p_theta.

            p_theta, p_ref: (V,) probabilities over the same vocabulary. Return one number.
            """
            raise NotImplementedError
        '''), "check_expected_k3(my_expected_k3)", _code('''
        import numpy as np


        def my_expected_k3(p_theta, p_ref):
            """Every token's k3, weighted by the probability that pi_theta samples it."""
            u = np.log(p_ref) - np.log(p_theta)
            return float(np.sum(p_theta * (np.expm1(u) - u)))
        ''')),
    # ------------------------------------------------------------------------ 6 LunarLander
    Exercise(6, "A", "the return-to-go", 5, _prose("""
        The credit study's better baseline starts from each step's return-to-go: its own reward
        plus every reward after it in the flight. `my_returns_to_go(rewards)` gets one flight's
        rewards as a NumPy array and returns one return per step. The check compares it with
        `returns_to_go` on a flight that descends well, drifts and crashes, and on a random
        one."""), _code('''
        def my_returns_to_go(rewards):
            """Each step's reward plus every reward after it in the flight.

            rewards: (T,) one flight's rewards. Return a (T,) array.
            """
            raise NotImplementedError
        '''), "check_returns_to_go(my_returns_to_go)", _code('''
        import numpy as np


        def my_returns_to_go(rewards):
            """A running sum from the end of the flight backwards."""
            return np.cumsum(np.asarray(rewards, dtype=float)[::-1])[::-1]
        ''')),
    Exercise(6, "B", "GAE for one short flight", 15, _prose(r"""
        Write `gae` for one flight that ends in a crash. `my_gae(rewards, values, gamma, lam)` gets
        the rewards, the critic's $V(s_t)$ at every step, $\gamma$ and $\lambda$. Work backwards
        from the last step. The TD error is $\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t)$, with
        $V = 0$ after the crash, and $A_t = \delta_t + \gamma\lambda A_{t+1}$. Return the
        advantages, not the value targets. The check uses a short flight with $\gamma = 0.9$ and
        $\lambda = 0.8$, where each usual mistake shows."""), _code('''
        def my_gae(rewards, values, gamma, lam):
            """GAE(gamma, lambda) advantages of one flight that ends in a crash.

            rewards, values: (T,) each step's reward and the critic's V(s_t); after the last
            step the flight is worth 0. Return a (T,) array of advantages.
            """
            raise NotImplementedError
        '''), "check_gae(my_gae)", _code('''
        import numpy as np


        def my_gae(rewards, values, gamma, lam):
            """TD errors summed backwards, each step further ahead weighted gamma * lam less."""
            advantages = np.zeros(len(rewards))
            next_advantage, next_value = 0.0, 0.0        # after the crash: worth 0
            for t in reversed(range(len(rewards))):
                delta = rewards[t] + gamma * next_value - values[t]
                next_advantage = delta + gamma * lam * next_advantage
                advantages[t] = next_advantage
                next_value = values[t]
            return advantages
        ''')),
    # ------------------------------------------------------------------------ 7 the verifier
    Exercise(7, "A", "the verifier's reading", 15, _prose("""
        Write the reward. `my_reward(completion, answer)` returns 1.0 when the number right after
        the last `####` is the reference `answer` (a string such as `"72"`), and 0.0 otherwise.
        Strip commas and a dollar sign, accept a sign and decimals, and compare numbers, not
        strings: `12.0` is `12`. It must never raise. Half the cases must not pay: no `####` line,
        a number in words, words between `####` and the number, a longer number that
        only begins with the answer's digits. The modules `re`
        and `decimal` help."""), _code('''
        def my_reward(completion, answer):
            """1.0 if the number right after the last '####' is the answer, else 0.0.

            completion: the model's text (anything: it never raises); answer: the reference
            number as a string. Return 1.0 or 0.0.
            """
            raise NotImplementedError
        '''), "check_reward(my_reward)", _code('''
        import re
        from decimal import Decimal

        NUMBER = re.compile(r"[\\s:=]*(-?\\$?[0-9][0-9,]*(?:\\.[0-9]+)?)")


        def my_reward(completion, answer):
            """Exact match on the number that opens the last '####' line."""
            if not isinstance(completion, str) or "####" not in completion:
                return 0.0
            line = completion.rsplit("####", 1)[1].split("\\n", 1)[0]
            found = NUMBER.match(line)
            if found is None:
                return 0.0
            number = found.group(1).replace(",", "").replace("$", "")
            return 1.0 if Decimal(number) == Decimal(answer) else 0.0
        ''')),
    Exercise(7, "B", "annotations, never eval", 15, _prose("""
        Write the annotation check without `eval`. `my_annotations_ok(text)` returns one `True` or
        `False` per `<<expr=value>>` in the text, in order: `True` when the expression's value
        equals the claimed value. Find them with a regular expression and compute both sides with
        `verifier.safe_arith`, which raises `ValueError` on anything but numbers, the four
        operations and parentheses. Count that as `False`. One case holds Python, not arithmetic:
        `eval` would pay it."""), _code('''
        def my_annotations_ok(text):
            """One True/False per <<expr=value>> in text: is the claimed value the expression's?

            Return a list of bools, in the order the annotations appear.
            """
            raise NotImplementedError
        '''), "check_annotation_reading(my_annotations_ok)", _code('''
        import re

        from grpo.lm.verifier import safe_arith


        def my_annotations_ok(text):
            """Both sides read by a parser of arithmetic alone: model text is never run."""
            ok = []
            for expr, claimed in re.findall(r"<<([^<>=]*)=([^<>]*)>>", text):
                try:
                    ok.append(safe_arith(expr) == safe_arith(claimed))
                except ValueError:              # not arithmetic, or a division by zero
                    ok.append(False)
            return ok
        ''')),
    # ------------------------------------------------------------------------ 8 GRPO on the LM
    Exercise(8, "A", "the loss, masked", 20, _prose(r"""
        Assemble the loss from this chapter's pieces, with no KL term. `my_grpo_loss(logp,
        logp_old, mask, rewards)` gets tensors of token log-probabilities, one row per answer, the
        mask (1 on completion tokens, 0 on padding) and the rewards, one row per group. Give every
        token its answer's advantage (`group_advantages`), take `clipped_surrogate` at its default
        clip (it returns the per-token surrogate and which tokens were clipped: keep the first),
        average each answer over its own tokens, then average the answers, and return minus that.
        The padding holds junk: a loss that forgets the mask counts it."""), _code('''
        def my_grpo_loss(logp, logp_old, mask, rewards):
            """DeepSeekMath's GRPO loss without the KL term, as grpo_loss computes it.

            logp, logp_old, mask: (B*G, T) tensors, mask 1 on completion tokens; rewards: (B, G).
            Return the loss, a number or a 0-d tensor.
            """
            raise NotImplementedError
        '''), "check_grpo_loss(my_grpo_loss)", _code('''
        from grpo.objectives import group_advantages
        from grpo.surrogate import clipped_surrogate


        def my_grpo_loss(logp, logp_old, mask, rewards):
            """Advantages, the clipped ratio per token, 1/|o_i| per answer, then the mean."""
            adv = group_advantages(rewards).reshape(-1, 1)       # one per answer, every token
            surrogate, _ = clipped_surrogate(logp, logp_old, adv)
            per_answer = (surrogate * mask).sum(1) / mask.sum(1)
            return -per_answer.mean()
        '''), imports=("from grpo.objectives import group_advantages  # noqa: F401, for your code",
                    "from grpo.surrogate import clipped_surrogate  # noqa: F401, for your code")),
    Exercise(8, "B", "the token-level loss", 5, _prose("""
        DAPO averages differently: one mean over every completion token of the batch.
        `my_token_level_loss(logp, logp_old, mask, rewards)` takes the same inputs as above
        and returns that loss. Change one line of your answer above. The difference matters
        when lengths differ: averaged per answer, each token of a long wrong answer weighs
        less than a token of a short one, so the long answer is pushed down less, token for
        token; the token-level loss weighs every token the same. That is Dr. GRPO's
        length-bias argument."""), _code('''
        def my_token_level_loss(logp, logp_old, mask, rewards):
            """The token-level GRPO loss without the KL term: one mean over all completion tokens.

            The same inputs as my_grpo_loss. Return the loss, a number or a 0-d tensor.
            """
            raise NotImplementedError
        '''), "check_token_level_loss(my_token_level_loss)", _code('''
        from grpo.objectives import group_advantages
        from grpo.surrogate import clipped_surrogate


        def my_token_level_loss(logp, logp_old, mask, rewards):
            """Every completion token of the batch counts once, whatever its answer's length."""
            adv = group_advantages(rewards).reshape(-1, 1)
            surrogate, _ = clipped_surrogate(logp, logp_old, adv)
            return -(surrogate * mask).sum() / mask.sum()
        ''')),
    # ------------------------------------------------------------------------ 9 addition
    Exercise(9, "A", "pass@k, unbiased", 10, _prose(r"""
        Write Chen et al.'s estimator. A problem was answered $n$ times, and $c$ of the answers
        were right. `my_pass_at_k(n, c, k)` returns the chance that at least one of $k$ answers,
        drawn without replacement from the $n$, is right: $1 - \binom{n-c}{k}/\binom{n}{k}$.
        `math.comb` computes both. Mind the case where fewer than $k$ answers are wrong. The check
        compares your estimate with `eval.pass_at_k`."""), _code('''
        def my_pass_at_k(n, c, k):
            """The unbiased pass@k of one problem with c right answers among n samples.

            n, c, k: integers, 0 <= c <= n and 1 <= k <= n. Return one number.
            """
            raise NotImplementedError
        '''), "check_pass_at_k(my_pass_at_k)", _code('''
        from math import comb


        def my_pass_at_k(n, c, k):
            """One minus the chance that k answers drawn without replacement are all wrong."""
            return 1 - comb(n - c, k) / comb(n, k)
        ''')),
    Exercise(9, "B", "the reward that ignores the answer", 5, _prose("""
        Write this chapter's first control. `my_random_reward(verifier_rewards, uniforms)` gets the
        verifier's rewards for one batch and one uniform draw per answer. It pays 1 where the draw
        falls below the batch's success rate, and 0 elsewhere. So it pays as often as the verifier,
        but never because an answer was right. The check compares it with
        `verifier.random_rewards`."""), _code('''
        def my_random_reward(verifier_rewards, uniforms):
            """The control reward: 1.0 at random, as often as the verifier paid on this batch.

            verifier_rewards, uniforms: (N,) arrays. Return an (N,) array of 0.0 / 1.0.
            """
            raise NotImplementedError
        '''), "check_random_reward(my_random_reward)", _code('''
        import numpy as np


        def my_random_reward(verifier_rewards, uniforms):
            """Pay where the draw falls below the verifier's success rate."""
            rate = np.mean(verifier_rewards)
            return (np.asarray(uniforms) < rate).astype(float)
        ''')),
    # ------------------------------------------------------------------------ 10 word problems
    Exercise(10, "A", "the share of groups that teach nothing", 5, _prose("""
        `my_degenerate_share(rewards)` gets a batch's rewards, one group per row, and returns the
        share of groups whose rewards are all equal: all right, all wrong, or any other tie. Such
        groups have zero advantage. The check compares your share with the `degenerate_fraction`
        that `grpo_loss` logs, the series behind this chapter's share of such groups."""), _code('''
        def my_degenerate_share(rewards):
            """The share of groups (rows) whose rewards are all equal.

            rewards: (B, G) one group per row. Return one number.
            """
            raise NotImplementedError
        '''), "check_degenerate_share(my_degenerate_share)", _code('''
        import numpy as np


        def my_degenerate_share(rewards):
            """A row teaches nothing when every reward equals its first."""
            r = np.asarray(rewards)
            return float(np.mean((r == r[:, :1]).all(axis=1)))
        ''')),
    Exercise(10, "B", "what it does to a batch", 10, _prose(r"""
        A batch of $B$ problems with $G$ answers each holds $BG$ answers, but only the answers in
        groups that disagree carry a gradient. If problem $b$ is answered right with probability
        $p_b$, its group is all right with probability $p_b^G$ and all wrong with probability
        $(1-p_b)^G$. `my_effective_batch(p, G)` returns the expected number of answers that carry
        a gradient. The check sums over every possible group of answers to get the same
        number."""), _code('''
        def my_effective_batch(p, G):
            """The expected number of answers in groups that disagree.

            p: (B,) each problem's chance of a right answer; G: answers per problem.
            Return one number.
            """
            raise NotImplementedError
        '''), "check_effective_batch(my_effective_batch)", _code('''
        import numpy as np


        def my_effective_batch(p, G):
            """G answers for each group, times the chance that its group is not all alike."""
            p = np.asarray(p, dtype=float)
            return float(G * np.sum(1 - p**G - (1 - p) ** G))
        ''')),
    # ------------------------------------------------------------------------ 11 pretrained
    Exercise(11, "A", "one answer, read four ways", 15, _prose(r"""
        Write your own `read_calculation`, the library's four-way reader.
        `my_read_calculation(text, calculation)` gets an answer and the problem's
        calculation, written like `"1+7=8"`. Take the answer's first equation with
        `verifier.equations_in`: each `Equation` it returns has `operands`, `operators` and
        `true`. Return `"no_equation"`, `"other_calculation"`, `"slip"` or `"right"`. The
        operands of $+$ and $\times$ may come in either order, those of $-$ and $\div$ may
        not. `fractions.Fraction` reads the calculation's numbers."""), _code('''
        def my_read_calculation(text, calculation):
            """What the answer's first equation does with the problem's calculation.

            text: the answer; calculation: "a op b=c". Return "no_equation",
            "other_calculation", "slip" or "right".
            """
            raise NotImplementedError
        '''), "check_read_calculation(my_read_calculation)", _code('''
        import re
        from fractions import Fraction

        from grpo.lm.verifier import equations_in


        def my_read_calculation(text, calculation):
            """The first equation against a op b: its operation and operands, then its result."""
            found = equations_in(text)
            if not found:
                return "no_equation"
            a, op, b = re.fullmatch(r"([0-9.]+)([-+*/])([0-9.]+)=.*", calculation).groups()
            a, b = Fraction(a), Fraction(b)
            orders = [(a, b), (b, a)] if op in "+*" else [(a, b)]
            first = found[0]
            if first.operators != (op,) or first.operands not in orders:
                return "other_calculation"
            return "right" if first.true else "slip"
        '''), imports=("from grpo.lm import verifier  # noqa: F401, for your code",)),
    Exercise(11, "B", "the last number", 10, _prose("""
        The reward here reads the last number an answer writes. `my_last_number(text)` returns
        that number as the verifier normalises it (`verifier.normalize_number`: no commas, no
        dollar sign, `12.0` as `12`), or `None` when there is none or the text is not a string. A
        regular expression finds the numbers. One case lists every number up to the right one:
        your function pays it too, which is why this reward is gameable."""), _code('''
        def my_last_number(text):
            """The last number in text, normalised, or None.

            text: the answer (anything: a non-string gives None). Return a string or None.
            """
            raise NotImplementedError
        '''), "check_last_number(my_last_number)", _code('''
        import re

        from grpo.lm.verifier import normalize_number


        def my_last_number(text):
            """Every number in the text, the last one normalised."""
            if not isinstance(text, str):
                return None
            numbers = re.findall(r"-?\\$?[0-9][0-9,]*(?:\\.[0-9]+)?", text)
            return normalize_number(numbers[-1].rstrip(",")) if numbers else None
        ''')),
    # ------------------------------------------------------------------------ 12 in practice
    Exercise(12, "A", "name the failure", 20, _prose("""
        Here are six runs' logs, one series per thing the book logs, one value per iteration. One
        run is healthy; each other run shows one failure of this chapter. The table gives each
        series' first and last value; `RUNS["B"]` prints a whole run. Read them as you would read
        your own runs. Then write `diagnose(logs)`, which names one run's failure with one of
        `DIAGNOSES`. The check runs it on all six and compares with the label each run was planted
        with. When you are wrong, it says which series argues against your answer."""), _code('''
        def diagnose(logs):
            """Name one run's failure.

            logs: {series name: one value per iteration}. Return one of DIAGNOSES.
            """
            raise NotImplementedError


        RUNS = failure_logs()  # six runs, "A" to "F": {series name: one value per iteration}
        print("DIAGNOSES:", ", ".join(DIAGNOSES))
        failure_table(RUNS)  # each series' first and last value, run by run
        '''), "check_diagnosis(diagnose)", _code('''
        import numpy as np


        def diagnose(logs):
            """The chapter's symptoms, the clearest first."""
            def change(key):
                return logs[key][-1] - logs[key][0]

            if change("entropy_mean") > 1 or change("kl_mean") > 1:
                return "learning_rate_too_high"        # entropy and the KL explode
            if np.mean(logs["clipped_ratio"]) > 0.3:
                return "truncation"                    # answers cut at the budget score 0
            if np.mean(logs["degenerate_fraction"]) > 0.8:
                return "groups_teach_nothing"          # no group disagrees
            if logs["kl_mean"][-1] < 1e-3:
                return "learning_rate_too_low"         # the policy never left its start
            if change("held_out_right_calculation") < 0.05:
                return "format_only"                   # accuracy rose, the arithmetic did not
            return "healthy"
        '''), uses=("DIAGNOSES", "failure_logs", "failure_table")),
    Exercise(12, "B", "a loss that is not a learning curve", 10, _prose(r"""
        Failure 2's worked group, as a function. `my_dapo_loss_at_ratio_one(lengths, rewards)`
        gets one group's answer lengths and rewards. It returns the loss TRL logs under
        `loss_type="dapo"` when every ratio is one and $\beta$ is zero: minus the length-weighted
        mean advantage. Use TRL's advantages: the group's mean subtracted, then its sample std
        plus `1e-4` divided out. Then try the chapter's pair of answers: what does the value say
        about learning?"""), _code('''
        def my_dapo_loss_at_ratio_one(lengths, rewards):
            """The loss TRL logs for one group under loss_type="dapo", at rho = 1 and beta = 0.

            lengths, rewards: (G,) each answer's tokens and reward. Return one number.
            """
            raise NotImplementedError
        '''), "check_loss_at_ratio_one(my_dapo_loss_at_ratio_one)", _code('''
        import numpy as np


        def my_dapo_loss_at_ratio_one(lengths, rewards):
            """Minus each answer's advantage weighted by its share of the group's tokens."""
            r = np.asarray(rewards, dtype=float)
            L = np.asarray(lengths, dtype=float)
            if np.all(r == r[0]):
                return 0.0                                   # no advantage, no loss
            adv = (r - r.mean()) / (r.std(ddof=1) + 1e-4)     # TRL's group scaling
            return float(-(L * adv).sum() / L.sum())
        ''')),
)


def chapter_exercises(chapter: int) -> tuple[Exercise, ...]:
    """The exercises of one chapter, in order (empty for a chapter without any)."""
    return tuple(e for e in EXERCISES if e.chapter == chapter)


def exercise_minutes() -> dict[int, int]:
    """Each chapter's exercise time in minutes, the sum of its exercises' stated estimates."""
    out: dict[int, int] = {}
    for e in EXERCISES:
        out[e.chapter] = out.get(e.chapter, 0) + e.minutes
    return out


def solution_markdown(exercise: Exercise) -> str:
    """The folded solution cell: the solution as a Python block in a dropdown admonition."""
    return (":::{admonition} Solution\n:class: dropdown\n\n```python\n" + exercise.solution
            + "\n```\n:::")


def _cell(kind: str, source: str, chapter: int, exercise: str, part: str) -> dict:
    """A notebook cell marked as this module's, with an id a re-run reproduces."""
    cell = {"cell_type": kind, "id": f"exercise-{chapter:02d}-{exercise.lower()}-{part}",
            "metadata": {MARKER: {"chapter": chapter, "exercise": exercise, "part": part}},
            "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def exercise_cells(chapter: int) -> list[dict]:
    """The chapter's "Exercises" section as notebook cells, without outputs: the heading, then
    per exercise its task, its stub (the first stub also imports the chapter's checks), its check
    and its folded solution."""
    exercises = chapter_exercises(chapter)
    if not exercises:
        return []
    checks = sorted({e.checker for e in exercises} | {n for e in exercises for n in e.uses})
    header = [_import_line("grpo.book.exercises", checks),
              *sorted({line for e in exercises for line in e.imports})]
    cells = [_cell("markdown", f"{SECTION_TITLE}\n\n{SECTION_INTRO}", chapter, "all", "section")]
    for i, e in enumerate(exercises):
        stub = "\n".join(header) + "\n\n\n" + e.stub if i == 0 else e.stub
        cells += [_cell("markdown", f"### Exercise {e.letter}: {e.title}\n\n{e.task}", chapter,
                        e.letter, "task"),
                  _cell("code", stub, chapter, e.letter, "stub"),
                  _cell("code", e.check, chapter, e.letter, "check"),
                  _cell("markdown", solution_markdown(e), chapter, e.letter, "solution")]
    return cells


def _import_line(module: str, names: list[str]) -> str:
    """``from module import names``, wrapped in parentheses past the book's 100 columns."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= 100:
        return line
    indent = " " * len(f"from {module} import (")
    wrapped, current = [], f"from {module} import ("
    for i, name in enumerate(names):
        word = name + (")" if i == len(names) - 1 else ",")
        if len(current) + len(word) + 1 > 100:
            wrapped.append(current.rstrip())
            current = indent
        current += word + " "
    return "\n".join(wrapped + [current.rstrip()])


def with_exercises(nb: dict, chapter: int) -> dict:
    """``nb`` with chapter ``chapter``'s exercise section at its end, replacing the cells this
    module wrote before; a cell whose source is unchanged is kept as it is (its id and outputs),
    so a second run changes nothing."""
    kept = {_key(c): c for c in nb["cells"] if MARKER in c.get("metadata", {})}
    cells = [c for c in nb["cells"] if MARKER not in c.get("metadata", {})]
    for new in exercise_cells(chapter):
        old = kept.get(_key(new))
        cells.append(old if old is not None and _source(old) == new["source"] else new)
    nb["cells"] = cells
    return nb


def _key(cell: dict) -> tuple:
    m = cell["metadata"][MARKER]
    return m["chapter"], m["exercise"], m["part"]


def _source(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source

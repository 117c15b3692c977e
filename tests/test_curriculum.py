"""The curriculum's sampling weights and draws, against the formula written here."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.curriculum import Curriculum, UniformPrompts


def expected_weights(solve_rate: np.ndarray, floor: float) -> np.ndarray:
    p = np.where(np.isnan(solve_rate), 0.5, solve_rate)
    return np.maximum(p * (1 - p), floor)


def test_weights_follow_p_times_one_minus_p_with_a_floor():
    cur = Curriculum(6, floor=0.05, decay=0.0)
    cur.update([0, 1, 2, 3, 4], [0.0, 1.0, 0.5, 0.25, 0.9])
    want = np.array([0.05, 0.05, 0.25, 0.1875, 0.09, 0.25])  # index 5 unseen: p = 0.5
    np.testing.assert_allclose(cur.weights(), want)
    np.testing.assert_allclose(cur.weights(), expected_weights(cur.solve_rate, 0.05))


def test_solve_rate_is_an_exponential_moving_average():
    cur = Curriculum(2, decay=0.75)
    cur.update([0], [1.0])
    cur.update([0], [0.0])
    cur.update([0, 1], [0.5, float("nan")])  # NaN: not scorable, no update
    assert cur.solve_rate[0] == pytest.approx((0.75 * 1.0 + 0.25 * 0.0) * 0.75 + 0.25 * 0.5)
    assert np.isnan(cur.solve_rate[1])
    assert cur.visits.tolist() == [3, 0]


def test_draw_frequencies_match_the_weights():
    rng = np.random.default_rng(0)
    n = 20
    cur = Curriculum(n, floor=0.02, decay=0.0, seed=1)
    cur.update(np.arange(n), rng.uniform(0, 1, n).round(2))
    w = expected_weights(cur.solve_rate, 0.02)
    counts = np.zeros(n)
    for _ in range(20000):
        counts[cur.draw(1)] += 1
    freq = counts / counts.sum()
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.01)
    # Distinct indices within one draw.
    for _ in range(50):
        d = cur.draw(8)
        assert len(set(d.tolist())) == 8


def test_frontier_prompts_are_drawn_far_more_than_solved_ones():
    cur = Curriculum(100, floor=0.01, decay=0.0, seed=0)
    cur.update(np.arange(50), np.ones(50))  # solved
    cur.update(np.arange(50, 100), np.full(50, 0.5))  # frontier
    drawn = np.concatenate([cur.draw(10) for _ in range(200)])
    assert (drawn >= 50).mean() > 0.9
    assert (drawn < 50).any(), "the floor keeps solved prompts in play"


def test_state_round_trip_continues_the_same_draws():
    a = Curriculum(30, seed=4)
    a.update([1, 2, 3], [0.0, 0.5, 1.0])
    a.draw(5)
    b = Curriculum(30, seed=99)
    b.load_state_dict(a.state_dict())
    assert [a.draw(5).tolist() for _ in range(3)] == [b.draw(5).tolist() for _ in range(3)]
    u = UniformPrompts(7, seed=2)
    u.draw(3)
    v = UniformPrompts(7, seed=0)
    v.load_state_dict(u.state_dict())
    assert u.draw(10).tolist() == v.draw(10).tolist()


def test_uniform_prompts_visit_every_prompt_once_per_epoch():
    u = UniformPrompts(10, seed=3)
    first, second = u.draw(10), u.draw(10)
    assert sorted(first.tolist()) == list(range(10)) == sorted(second.tolist())
    assert first.tolist() != second.tolist()


def test_bad_arguments_are_rejected():
    with pytest.raises(InvalidInputError, match="floor"):
        Curriculum(3, floor=0.0)
    with pytest.raises(InvalidInputError, match="no prompts"):
        Curriculum(0)
    with pytest.raises(InvalidInputError, match="entries"):
        Curriculum(3).update([0, 1], [0.5])

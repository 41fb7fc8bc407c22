"""forensics.core.parallel.both: two halves, results in order, either half's exception raised on the caller's thread."""

import threading

import pytest

from forensics.core.parallel import both


def test_results_in_order_and_the_second_on_another_thread():
    caller = threading.get_ident()
    first, second = both(lambda: ("first", threading.get_ident()), lambda: ("second", threading.get_ident()))
    assert first == ("first", caller)
    assert second[0] == "second" and second[1] != caller


def test_an_exception_of_the_second_half_is_raised_here_after_the_first_finished():
    done = []

    def first():
        done.append("first")
        return 1

    def second():
        raise ValueError("second half failed")

    with pytest.raises(ValueError, match="second half failed"):
        both(first, second)
    assert done == ["first"]


def test_the_first_halfs_exception_wins_and_the_second_half_is_waited_for():
    raised, finished = threading.Event(), []

    def first():
        raised.set()
        raise KeyError("first")

    def second():
        raised.wait(10)  # the timeout only guards against a hang
        finished.append(True)
        return 2

    with pytest.raises(KeyError):
        both(first, second)
    assert finished == [True]  # both() raised only after the second half had run to its end

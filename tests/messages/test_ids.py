"""Ids sort by creation within a process, under threads and across a fork."""

from __future__ import annotations

import os
import threading

import pytest

from remem.messages.ids import new_id


def test_ids_made_in_one_millisecond_keep_their_order() -> None:
    # thousands of ids share each millisecond here; drawn afresh, their tails would not sort
    ids = [new_id("evt") for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(len(i) == len("evt_") + 26 for i in ids)


def test_ids_from_racing_threads_are_unique_and_each_thread_sees_them_grow() -> None:
    per_thread: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(len(per_thread))

    def make(out: list[str]) -> None:
        start.wait()
        for _ in range(5_000):
            out.append(new_id())

    threads = [threading.Thread(target=make, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for out in per_thread for i in out]
    assert len(set(everything)) == len(everything)
    for out in per_thread:
        assert out == sorted(out)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_forked_child_does_not_repeat_its_parents_next_ids() -> None:
    new_id()  # the parent has a sequence under way
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, " ".join(new_id() for _ in range(200)).encode())
        os._exit(0)
    os.close(write)
    parents = {new_id() for _ in range(200)}
    with os.fdopen(read) as pipe:
        childs = set(pipe.read().split())
    os.waitpid(pid, 0)
    assert len(childs) == 200
    assert not parents & childs

"""The collector pause of the large builds (annotation.gc_pause) never leaves an app server's
collector switched off, and never switches it on under another block still building."""
import gc
import threading

from annotation.gc_pause import paused_gc


def test_overlapping_blocks_in_two_threads_resume_the_collector_only_when_the_last_ends():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with paused_gc():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with paused_gc():
            second_in.set()
            first_out.wait(5)
            seen["inside after the first ended"] = gc.isenabled()
        seen["after both"] = gc.isenabled()

    assert gc.isenabled()
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"inside after the first ended": False, "after both": True}


def test_a_collector_the_application_switched_off_stays_off():
    gc.disable()
    try:
        with paused_gc():
            with paused_gc():
                assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()

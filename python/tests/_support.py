"""Helpers shared by the test modules (not a test module itself)."""
import time


def eventually(pred, timeout=5.0):
    """Polls `pred` until it holds or `timeout` seconds pass: the condition
    with a deadline, never a sleep that hopes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()

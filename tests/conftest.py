"""Shared by the whole suite: how much of the gradient table's product of rows and transforms
this run samples (tests/gradtable.py, `sample`) and with which seed, said in the pytest header
and again under a failure, so that the failing case can be rerun as it ran."""

import gradtable


def pytest_report_header(config):
    return gradtable.describe_sampling()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if terminalreporter.stats.get("failed"):
        terminalreporter.write_line(f"{gradtable.describe_sampling()} (rerun with the same)")

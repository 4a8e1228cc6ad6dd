"""The fixture repositories contain their own (deliberately unrelated) tests/ folders: they are input
data for the miner, never part of veriforge's test suite."""

collect_ignore_glob = ["fixtures/*"]

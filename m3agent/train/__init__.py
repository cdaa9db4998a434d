"""Training the control model with RL (verl, ``pipelines/train``): the dataset conversion and what a row asks.

Nothing here imports verl: ``dataset`` turns M3-Bench annotations plus memory DBs (and memory-build tasks) into
the rows verl's dataset reads, and ``tasks`` reads a row back into an environment's task. Episodes are scored
by :mod:`m3agent.eval.rewards`, beside the judges. The verl side (tool, agent loop, reward function, configs)
lives in ``pipelines/train``.
"""

"""Training the control model with RL (verl, ``pipelines/train``): the reward and the dataset conversion.

Nothing here imports verl: ``rewards`` scores an episode of :class:`m3agent.envs.control.ControlEnv` with
the project's judges, and ``dataset`` turns M3-Bench annotations plus memory DBs into the rows verl's
dataset reads. The verl side (tool, agent loop, reward function, configs) lives in ``pipelines/train``.
"""

from m3agent.train.rewards import Episode, Reward, Rewarder, final_answer, has_ids

__all__ = ["Episode", "Reward", "Rewarder", "final_answer", "has_ids"]

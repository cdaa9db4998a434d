"""Text environments a policy acts in, one protocol for training, the bench and the app.

``reset(task) -> observation``; ``step(action) -> StepResult(observation, reward, done, info)``. An
observation is the chat messages the policy reads next; an action is the policy's reply text. The
control task (answer a question by searching memory) and the memory-construction task (build memory
from a stream of chunks with insert/update/delete tools) are both environments of this kind, so one
verl agent loop and one scripted-policy test harness drive either.
"""

from m3agent.envs.base import Env, EnvError, StepResult

__all__ = ["Env", "EnvError", "StepResult"]

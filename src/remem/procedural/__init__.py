"""Procedural memory: versioned prompts that learn from feedback.

* :class:`PromptRegistry`: named prompts in any remem store, every version kept (text,
  template variables, author, reason, source trajectories, time); get, history, diff, rollback.
* :class:`PromptOptimizer`: rewrites prompts from :class:`Trajectory` values (messages plus
  feedback) with the ``metaprompt``, ``gradient`` or ``prompt_memory`` strategy, alone or
  several prompts at once; nothing is stored until committed.
* Template variables (``{name}``, ``{{`` for a literal brace) are declared and checked on every
  write: a text that drops or invents one is a :class:`~remem.errors.TemplateVariableError`.

See docs/procedural.md.
"""

from remem.procedural.optimizer import MultiOptimization, Optimization, PromptOptimizer
from remem.procedural.prompts import PromptRegistry, PromptVersion, diff_texts
from remem.procedural.strategies import STRATEGIES, Strategy
from remem.procedural.templates import check_variables, render, variable_problem, variables
from remem.procedural.trajectories import Feedback, Trajectory

__all__ = [
    "STRATEGIES",
    "Feedback",
    "MultiOptimization",
    "Optimization",
    "PromptOptimizer",
    "PromptRegistry",
    "PromptVersion",
    "Strategy",
    "Trajectory",
    "check_variables",
    "diff_texts",
    "render",
    "variable_problem",
    "variables",
]

"""Template variables of a prompt: ``{name}`` placeholders, ``{{`` and ``}}`` as literal braces.

Pure code. A prompt declares the variables its text uses; :func:`check_variables` refuses a
new text that drops a declared variable or uses one that was never declared, naming both, so
neither a person nor an optimizing model can break the code that fills the prompt in.

Only ``{identifier}`` is a variable. Any other brace (a JSON example, ``{0}``, ``{a.b}``) is
literal text, so prompts that show JSON need no escaping; ``{{name}}`` is the literal text
``{name}``, as in :meth:`str.format`.

>>> variables("Hello {user}, answer in {{json}} about {topic}.")
('topic', 'user')
>>> render("Hi {user} {{x}}", {"user": "Ada"})
'Hi Ada {x}'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from remem.errors import TemplateVariableError

__all__ = ["check_variables", "render", "variable_problem", "variables"]

# an escaped brace, or a placeholder: alternatives tried left to right, so ``{{x}}`` is an escape
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def variables(text: str) -> tuple[str, ...]:
    """The variables ``text`` uses, sorted and without repeats."""
    return tuple(sorted({m.group(1) for m in _TOKEN.finditer(text) if m.group(1)}))


def variable_problem(text: str, declared: Iterable[str]) -> str | None:
    """Why ``text`` does not use exactly the ``declared`` variables, or ``None`` when it does."""
    found = set(variables(text))
    wanted = set(declared)
    missing = sorted(wanted - found)
    invented = sorted(found - wanted)
    if not missing and not invented:
        return None
    parts = []
    if missing:
        parts.append("drops " + ", ".join("{" + name + "}" for name in missing))
    if invented:
        parts.append("adds undeclared " + ", ".join("{" + name + "}" for name in invented))
    allowed = ", ".join("{" + name + "}" for name in sorted(wanted)) or "none"
    return (f"the prompt {' and '.join(parts)}; it must use exactly the declared template "
            f"variables ({allowed}), each at least once; write a literal brace as {{{{ or }}}}")


def check_variables(text: str, declared: Iterable[str], *, what: str = "text") -> None:
    """Raise :class:`~remem.errors.TemplateVariableError` unless ``text`` uses exactly
    ``declared``."""
    problem = variable_problem(text, declared)
    if problem is not None:
        raise TemplateVariableError(f"{what}: {problem}")


def render(text: str, values: Mapping[str, object]) -> str:
    """``text`` with each variable replaced by ``str(values[name])`` and escapes undone.

    Raises :class:`~remem.errors.TemplateVariableError` naming any variable without a value.
    """
    missing = [name for name in variables(text) if name not in values]
    if missing:
        raise TemplateVariableError(
            "render: no value for " + ", ".join("{" + n + "}" for n in missing)
            + "; pass a value for every variable the prompt declares")

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return str(values[match.group(1)])

    return _TOKEN.sub(replace, text)

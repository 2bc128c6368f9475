"""The part of PEP 440 the release tools need, in the standard library only.

Versions are the normalised public form ``N(.N)*[{a|b|rc}N][.postN][.devN]`` that hatch writes
and PyPI shows; epochs, local versions (``+local``) and alternative spellings (``1.0-rc1``) are
refused. Specifiers: ``==``, ``!=`` (both also with a trailing ``.*``), ``>=``, ``<=``, ``>``,
``<`` and ``~=``, comma-separated, with the meaning packaging 26 gives them (``<1.0`` excludes
1.0rc1, ``>1.0`` excludes 1.0.post1). Pre-releases (and dev releases) match only when a specifier
names one, as pip does without ``--pre``.
"""

import operator as op
import re
from functools import total_ordering

_VERSION = re.compile(
    r"(?P<release>\d+(?:\.\d+)*)(?:(?P<pre_kind>a|b|rc)(?P<pre>\d+))?"
    r"(?:\.post(?P<post>\d+))?(?:\.dev(?P<dev>\d+))?"
)
_SPECIFIER = re.compile(r"(?P<op>~=|==|!=|>=|<=|>|<)\s*(?P<version>[^\s,]+)")
_PRE_KINDS = ("a", "b", "rc")
_COMPARE = {"==": op.eq, "!=": op.ne, ">=": op.ge, "<=": op.le, ">": op.gt, "<": op.lt}


class VersionError(ValueError):
    """A version or a specifier outside the supported PEP 440 subset."""


@total_ordering
class Version:
    """A normalised PEP 440 public version, ordered as PEP 440 orders them.

    Raises
    ------
    TypeError
        If `text` is not a str.
    VersionError
        If `text` is not of the form ``N(.N)*[{a|b|rc}N][.postN][.devN]`` (integers without
        leading zeros).
    """

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"version must be a str, got {type(text).__name__}")
        match = _VERSION.fullmatch(text)
        if not match or any(len(n) > 1 and n.startswith("0") for n in re.findall(r"\d+", text)):
            raise VersionError(
                f"version {text!r} is not a normalised PEP 440 version such as 1.2.0, "
                "1.2.0rc1, 1.2.0.post1 or 1.2.0.dev3 (epochs and local versions are not supported)"
            )
        self.text = text
        self.release = tuple(int(n) for n in match["release"].split("."))
        self.pre = (match["pre_kind"], int(match["pre"])) if match["pre"] else None
        self.post = int(match["post"]) if match["post"] else None
        self.dev = int(match["dev"]) if match["dev"] else None

    @property
    def base(self) -> tuple[int, ...]:
        """The release without trailing zeros, so that 1.0 and 1.0.0 are the same release."""
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        return tuple(release)

    @property
    def is_prerelease(self) -> bool:
        """An alpha, beta, release candidate or dev release."""
        return self.pre is not None or self.dev is not None

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    def _key(self) -> tuple:
        if self.pre is not None:
            pre = (1, _PRE_KINDS.index(self.pre[0]), self.pre[1])
        else:  # a bare dev release sorts before every pre-release of its release
            pre = (0,) if self.dev is not None and self.post is None else (2,)
        post = -1 if self.post is None else self.post
        dev = (1,) if self.dev is None else (0, self.dev)
        return (self.base, pre, post, dev)

    def __eq__(self, other):
        return isinstance(other, Version) and self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Version({self.text!r})"

    def __str__(self):
        return self.text


def _starts_with(candidate: Version, prefix: tuple[int, ...]) -> bool:
    """The candidate's release, padded with zeros, starts with `prefix` (``==1.2.*``)."""
    release = candidate.release + (0,) * len(prefix)
    return release[: len(prefix)] == prefix


class Specifier:
    """One comparison such as ``>=0.1`` or ``==0.1.*``.

    Raises
    ------
    VersionError
        If `version` is not a supported version, a ``.*`` follows something other than a release
        or goes with an operator other than == and !=, or ``~=`` is given a single number.
    """

    def __init__(self, operator: str, version: str):
        self.operator, self.wildcard = operator, version.endswith(".*")
        self.target = Version(version.removesuffix(".*"))
        suffixed = self.target.is_prerelease or self.target.is_postrelease
        if self.wildcard and (operator not in ("==", "!=") or suffixed):
            raise VersionError(
                f"specifier {self}: only == and != take a trailing .*, after a release such as 1.2"
            )
        if operator == "~=" and len(self.target.release) < 2:
            raise VersionError(f"specifier {self}: ~= needs at least two release numbers")

    def __str__(self):
        return f"{self.operator}{self.target}{'.*' if self.wildcard else ''}"

    def contains(self, candidate: Version) -> bool:
        """Whether `candidate` satisfies this comparison (pre-release policy aside)."""
        target, operator = self.target, self.operator
        if self.wildcard:
            return _starts_with(candidate, target.release) == (operator == "==")
        if operator == "~=":  # ~=1.4.2 means >=1.4.2, ==1.4.*
            return candidate >= target and _starts_with(candidate, target.release[:-1])
        if operator == "<" and not target.is_prerelease:  # <1.0 excludes 1.0rc1 and 1.0.dev1
            return candidate < Version(f"{target}.dev0")
        if operator == ">" and target.dev is None and target.post is None:  # >1.0: not 1.0.post1
            own_post = candidate.base == target.base and candidate.pre == target.pre
            return candidate > target and not own_post
        return _COMPARE[operator](candidate, target)


def parse_specifiers(text: str) -> list[Specifier]:
    """Parse a comma-separated specifier set such as ``>=0.1,<0.2`` (empty: any version).

    Raises
    ------
    VersionError
        If an item is not an operator followed by a supported version.
    """
    if not isinstance(text, str):
        raise TypeError(f"specifiers must be a str, got {type(text).__name__}")
    specifiers = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _SPECIFIER.fullmatch(item)
        if not match:
            raise VersionError(
                f"specifier {item!r} in {text!r} is not an operator (~= == != >= <= > <) "
                "followed by a version"
            )
        specifiers.append(Specifier(match["op"], match["version"]))
    return specifiers


def satisfying(text: str, versions: list[str]) -> list[str]:
    """The `versions` that satisfy the specifier set `text`, highest first.

    Pre-releases count only when a specifier of `text` names one.

    Raises
    ------
    VersionError
        If `text` or one of `versions` is outside the supported subset.
    """
    specifiers = parse_specifiers(text)
    allow_pre = any(spec.target.is_prerelease for spec in specifiers)
    candidates = sorted((Version(v) for v in versions), reverse=True)
    return [
        str(v)
        for v in candidates
        if (allow_pre or not v.is_prerelease) and all(s.contains(v) for s in specifiers)
    ]

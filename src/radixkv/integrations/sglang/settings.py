"""The backend's tiers below SGLang's KV pool, read from the scheduler's environment once,
at construction (SGLang has no flag of its own for them; HiCache's flags select another cache).

============================================ ==================================================
``RADIXKV_SGLANG_HOST_TOKENS``               host tier size in tokens (whole pages); unset or
                                             ``0``: no host tier, and no L3
``RADIXKV_SGLANG_HOST_WRITE_POLICY``         ``write_through`` (default),
                                             ``write_through_selective`` or ``write_back``
``RADIXKV_SGLANG_STORAGE``                   the shared store (L3): ``redis://[:PASSWORD@]HOST
                                             [:PORT][/DB]``, ``redis+unix:///PATH/redis.sock
                                             [?db=N]`` or ``file:///PATH``; needs a host tier
``RADIXKV_SGLANG_STORAGE_PREFIX``            the fleet's key prefix (``radixkv``)
``RADIXKV_SGLANG_STORAGE_MODEL``             the model id in the page keys (default: the
                                             model path, and ``@revision`` if given); engines
                                             that share pages must agree on it
``RADIXKV_SGLANG_STORAGE_WAIT``              how long a request waits for its L3 pages:
                                             ``timeout`` (default), ``wait_complete`` or
                                             ``best_effort``
``RADIXKV_SGLANG_STORAGE_TIMEOUT_S``         that timeout in seconds (``1.0``)
``RADIXKV_SGLANG_PREFETCH_THRESHOLD``        ask L3 only for at least this many tokens (256)
============================================ ==================================================

A bad value raises :class:`~.support.UnsupportedConfiguration` naming the variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from radixkv.errors import ConfigError
from radixkv.integrations.sglang.support import UnsupportedConfiguration
from radixkv.storage.urls import check_store_url

__all__ = ["TierSettings", "check_storage"]

PREFIX = "RADIXKV_SGLANG_"
WRITE_POLICIES = ("write_through", "write_through_selective", "write_back")
WAIT_POLICIES = ("timeout", "wait_complete", "best_effort")


@dataclass(frozen=True)
class TierSettings:
    """What the environment asks for; ``host_tokens is None``: no tier below the device."""

    host_tokens: int | None = None
    write_policy: str = "write_through"
    storage: str | None = None
    prefix: str = "radixkv"
    model: str | None = None
    wait_policy: str = "timeout"
    timeout_s: float = 1.0
    prefetch_threshold: int = 256

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TierSettings:
        """Read and check the ``RADIXKV_SGLANG_*`` variables of ``env``."""
        host = _int(env, "HOST_TOKENS", 0)
        settings = cls(
            host_tokens=host or None,
            write_policy=_choice(env, "HOST_WRITE_POLICY", WRITE_POLICIES),
            storage=env.get(PREFIX + "STORAGE") or None,
            prefix=env.get(PREFIX + "STORAGE_PREFIX") or "radixkv",
            model=env.get(PREFIX + "STORAGE_MODEL") or None,
            wait_policy=_choice(env, "STORAGE_WAIT", WAIT_POLICIES),
            timeout_s=_seconds(env, "STORAGE_TIMEOUT_S", 1.0),
            prefetch_threshold=_int(env, "PREFETCH_THRESHOLD", 256),
        )
        if settings.storage is not None and settings.host_tokens is None:
            raise UnsupportedConfiguration(
                f"{PREFIX}STORAGE needs a host tier: set {PREFIX}HOST_TOKENS (L3 pages are "
                "read into host memory and written from it)")
        if settings.storage is not None:
            check_storage(settings.storage)
        return settings

    def check_page(self, page_size: int) -> None:
        """The host tier holds whole pages of SGLang's page size."""
        if self.host_tokens is not None and self.host_tokens % page_size:
            raise UnsupportedConfiguration(
                f"{PREFIX}HOST_TOKENS={self.host_tokens} is not a multiple of the page size "
                f"{page_size}")


def check_storage(url: str) -> None:
    """A store URL as :mod:`radixkv.storage.urls` takes it, or an error naming the variable."""
    try:
        check_store_url(url)
    except ConfigError as error:
        raise UnsupportedConfiguration(f"{PREFIX}STORAGE={error}") from None


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(PREFIX + name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UnsupportedConfiguration(f"{PREFIX}{name}={text!r} is not an int >= 0")
    return value


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(PREFIX + name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise UnsupportedConfiguration(f"{PREFIX}{name}={text!r} is not seconds > 0")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    text = env.get(PREFIX + name, "").strip() or choices[0]
    if text not in choices:
        raise UnsupportedConfiguration(
            f"{PREFIX}{name}={text!r}: one of {', '.join(choices)}")
    return text

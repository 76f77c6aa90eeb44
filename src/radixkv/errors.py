"""The radixkv exception hierarchy.

Every error radixkv raises on bad input derives from :class:`RadixKVError`. Where Python users
expect a built-in category the class also derives from it (``ValueError`` for a bad value,
``TypeError`` for a bad type, ``LookupError`` for a stale handle), so ``except ValueError`` keeps
working. Raising any of these guarantees the cache is exactly as it was before the call.
"""

from __future__ import annotations


class RadixKVError(Exception):
    """Base class of every error radixkv raises on purpose."""


class ConfigError(RadixKVError, ValueError):
    """A configuration value is invalid (page_size 0, unknown policy, bad combination...)."""


class ConfigTypeError(RadixKVError, TypeError):
    """A configuration object or value has the wrong type (e.g. not a CacheConfig)."""


class InvalidTokensError(RadixKVError, ValueError):
    """Tokens are not integers in [0, 2**32) or have the wrong shape."""


class InvalidSlotsError(RadixKVError, ValueError):
    """A slot array has the wrong length, dtype or contents (double free, foreign slot...)."""


class InvalidSlotsTypeError(RadixKVError, TypeError):
    """A slot array is not a numpy array (or torch tensor) of integers."""


class InvalidArgumentError(RadixKVError, ValueError):
    """Some other argument has a bad value (a negative length, a priority that is no int...)."""


class InvalidNamespaceError(RadixKVError, ValueError):
    """A namespace is not ``None`` nor an ``(extra_key, cache_salt)`` pair of str/int/None."""


class StaleHandleError(RadixKVError, LookupError):
    """A NodeId refers to a node that no longer exists (evicted, merged away, or reset)."""


class LockError(RadixKVError, ValueError):
    """A lock receipt is invalid: already released, or issued by another cache."""


class LeaseError(RadixKVError, ValueError):
    """A lease is invalid: already finished or aborted, or issued by another cache."""


class AllocationError(RadixKVError, ValueError):
    """An :class:`~radixkv.Allocation` is invalid: already inserted or released, a copy, or
    issued by another cache."""


class OutOfSlotsError(RadixKVError, MemoryError):
    """Not enough free slots, even after evicting every evictable entry."""


class InvariantError(RadixKVError, AssertionError):
    """``check_invariants()`` found the cache in an inconsistent state (a bug in radixkv)."""


class InvalidArgumentTypeError(RadixKVError, TypeError):
    """An argument has the wrong type (e.g. ``publish(None)`` instead of a cache)."""


class PublisherClosedError(RadixKVError, RuntimeError):
    """A KV event publisher was used after :meth:`~radixkv.events.KVEventPublisher.close`."""


class EngineError(RadixKVError, RuntimeError):
    """Code the engine provides (its KV allocator, copy engine or store) answered outside its
    contract: slots that are not whole pages, ids the cache already holds, a count that is
    no count. The cache is unchanged."""


class CopyEngineError(EngineError):
    """The copy engine broke its contract in a way the cache cannot count and go on from:
    a copy it never reported within ``HostTier.wait_timeout_s`` (the copy stays in flight,
    its slots held, so a wait can be retried)."""


class StorageTimeoutError(EngineError):
    """The store did not finish the I/O a call waits for (``wait()``, ``reset()``,
    ``close()``) within ``StorageTier.wait_timeout_s``: a stalled store without a bound of
    its own. That I/O stays in flight (the host slots it reads into held) and nothing else
    changed, so the call can be retried."""

"""Library objects in BigCodeBench's replay encoding (`job.codec` calls these).

Only kinds whose rebuilding runs no code a record could steer, each by a trusted constructor:
- rsa's keys, as their PKCS#1 bytes, read back by rsa's own `load_pkcs1`;
- scikit-learn's estimators (`BaseEstimator` subclasses: models, scalers, clusterers) as
  their class and the attributes of their `__dict__` (parameters and fitted arrays), each a
  value the codec carries: rebuilt as an instance of that class, found among the modules
  already loaded (none is imported), with those attributes. A program could make the same
  object (`object.__new__` and its `__dict__`); a class with a finalizer (`__del__`) is
  refused, so that nothing runs when the object goes.
An estimator holding something else (a tree's Cython state, a function) is not carried.
"""

import sys
import types


def encoder(value):
    """The encoder for `value` (an rsa key, a scikit-learn estimator), or None."""
    cls = type(value)
    top = cls.__module__.split(".")[0]
    if top == "rsa" and cls.__qualname__ in ("PublicKey", "PrivateKey"):
        return lambda e, key, d: ["rsa", cls.__qualname__, e.payload(key.save_pkcs1("DER"))]
    if (
        top == "sklearn"
        and _estimator_class(cls)
        and isinstance(getattr(value, "__dict__", None), dict)
    ):
        return _estimator
    return None


def _estimator_class(cls):
    base = getattr(sys.modules.get("sklearn.base"), "BaseEstimator", None)
    return (
        isinstance(cls, type)
        and base is not None
        and issubclass(cls, base)
        and not any("__del__" in vars(c) for c in cls.__mro__)
    )


def _estimator(e, value, d):
    cls = type(value)
    state = e.encode(dict(vars(value)), d)
    return ["estimator", cls.__module__, cls.__qualname__, state]


def _decode_rsa(args, item):
    import base64

    rsa = sys.modules.get("rsa")
    if rsa is None or args[0] not in ("PublicKey", "PrivateKey"):
        raise ValueError("an rsa key where rsa is not loaded")
    return getattr(rsa, args[0]).load_pkcs1(base64.b64decode(args[1]), "DER")


def loaded_class(module_name, qualname):
    """The class `qualname` names in the loaded module `module_name`, or None. Both come from
    a record (untrusted): each step is a look-up in a module's or class's own namespace
    (`vars`: no attribute hook, descriptor or module `__getattr__` runs), of a public or
    private name but never a dunder, and each must find a class; nothing is imported."""
    found = sys.modules.get(str(module_name))
    if not issubclass(type(found), types.ModuleType):  # (type(): no __class__ hook runs)
        return None
    for part in str(qualname).split("."):
        if part.startswith("__") or not part.isidentifier():
            return None
        found = vars(found).get(part)
        if not issubclass(type(found), type):
            return None
    return found


def _decode_estimator(args, item):
    module, qualname, state = args
    cls = loaded_class(module, qualname)
    if cls is None or not _estimator_class(cls):
        raise ValueError(f"not a loaded scikit-learn estimator: {module}.{qualname}")
    attributes = item(state)
    if type(attributes) is not dict or any(type(k) is not str for k in attributes):
        raise ValueError("an estimator's attributes must be a dict of names")
    estimator = object.__new__(cls)
    estimator.__dict__.update(attributes)
    return estimator


DECODERS = {"rsa": _decode_rsa, "estimator": _decode_estimator}

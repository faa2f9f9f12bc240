"""Argument checks shared by the package's Python layer."""
import operator

# The C types the bindings take counts as: a Python int outside them would get pybind11's
# generic "incompatible function arguments" TypeError instead of a message that names it.
C_INT = (-2**31, 2**31 - 1, "a C int")
UINT64 = (0, 2**64 - 1, "a uint64")


def whole(name, value, error, limits=None):
    """`value` as an int: Python and numpy integers pass; a float, bool or string raises `error`
    naming it, where int() would truncate 8.7 to 8 without a word. With `limits` = (low, high,
    what), a value outside [low, high] raises `error` too, naming `what` (the C type it goes
    into)."""
    if not isinstance(value, bool):
        try:
            value = operator.index(value)
        except TypeError:
            pass
        else:
            if limits is None or limits[0] <= value <= limits[1]:
                return value
            raise error("%s = %d, out of range: %s holds %d to %d"
                        % (name, value, limits[2], limits[0], limits[1]))
    raise error("%s = %r, expected an integer" % (name, value))


def number(name, value, error):
    """`value` as a float: Python and numpy numbers pass; a string or bool raises `error` naming
    it, where float() would read "5" as 5."""
    if not isinstance(value, (str, bytes, bool)):
        try:
            return float(operator.index(value)) if hasattr(value, "__index__") else float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    raise error("%s = %r, expected a number" % (name, value))


def flag(name, value, error):
    """A bool option: True/False, 0/1 or a numpy bool; a string such as "False", which bool()
    reads as True, raises `error` naming it."""
    if isinstance(value, (bool, int)) and value in (0, 1):
        return bool(value)
    if type(value).__name__ in ("bool_", "bool") and type(value).__module__ == "numpy":
        return bool(value)
    raise error("%s = %r, expected True or False" % (name, value))

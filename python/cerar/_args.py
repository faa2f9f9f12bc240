"""Argument checks shared by the package's Python layer."""
import operator


def whole(name, value, error):
    """`value` as an int: Python and numpy integers pass; a float, bool or string raises `error`
    naming it, where int() would truncate 8.7 to 8 without a word."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise error("%s = %r, expected an integer" % (name, value))

"""The one exception type the CLI turns into a single line on stderr and exit code 2."""


class UserError(Exception):
    """Something the user can fix: a bad option, a missing or corrupt file.  The message
    is one plain sentence saying what is wrong and how to fix it."""

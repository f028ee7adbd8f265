"""The one error of making or using a bundle."""


class BundleError(Exception):
    """The bundle cannot be made or used as asked; nothing was replaced. `hint` says what
    to do next; `exit_code` is 2 for bad input (the bundle, the arguments) and 1 for a run
    that failed (a full disk)."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = 2):
        super().__init__(message)
        self.hint = hint
        self.exit_code = exit_code

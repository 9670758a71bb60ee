"""allauth's log-in form with labels that say what to type (``ACCOUNT_FORMS["login"]``)."""

from allauth.account.forms import LoginForm as AllauthLoginForm


class LoginForm(AllauthLoginForm):
    """allauth's log-in form, with a label that says what to type (allauth's says "Login")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or e-mail"
        self.fields["remember"].label = "Keep me logged in on this computer"

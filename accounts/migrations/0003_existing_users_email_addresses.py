"""Existing users get allauth's e-mail record: their address, primary, **not verified**.

Accounts made before e-mail verification existed never proved they own their
address, and the old sign-up let anyone make as many as they liked. They keep
logging in with their password and their API tokens keep working (the
Profile and ApiToken rows are untouched); uploading to a split that requires a
verified address (hidden splits, by default) asks them once to click the
link, like every new account. Addresses are stored in their canonical
spelling; when two old accounts share a mailbox only the older one gets the
record (the other adds an address of its own on its e-mail page).
"""

from django.db import migrations

from accounts.emails import canonical_email


def add_email_addresses(apps, schema_editor):
    User = apps.get_model("auth", "User")
    EmailAddress = apps.get_model("account", "EmailAddress")
    taken = {email.lower() for email in EmailAddress.objects.values_list("email", flat=True)}
    have_one = set(EmailAddress.objects.values_list("user_id", flat=True))
    new = []
    for user_id, email in User.objects.exclude(email="").order_by("pk").values_list("pk", "email"):
        address = canonical_email(email)
        if user_id in have_one or address in taken or "@" not in address:
            continue
        taken.add(address)
        new.append(EmailAddress(user_id=user_id, email=address, verified=False, primary=True))
    EmailAddress.objects.bulk_create(new, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_cache_table"),
        ("account", "0009_emailaddress_unique_primary_email"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    # Reversing keeps the records: allauth's tables outlive this app's migrations.
    operations = [migrations.RunPython(add_email_addresses, migrations.RunPython.noop)]

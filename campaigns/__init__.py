"""Shared tasks: phases with deadlines on a hidden split, teams, the public/private topic partition,
the private board's snapshot and the e-mail notifications (the models and the rules that need no submission)."""

"""How numbers are shown: formatting tags and SVG plots, shared by the leaderboards and the participants' pages."""

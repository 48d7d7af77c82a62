"""The page's shared parts, around the tabs: the header (model picker, language switch, device
line) and the one language redraw (shell.py), the lessons panel (lessons.py), the class bar and
the Class tab's controls (classroom.py, class_teacher.py), the sections a link or a lesson can
open (views.py) and the first answers kept at start (warm.py). app.py composes them with the
tabs (explorer/ui/tabs/); a tab may import from here, nothing here imports a tab."""

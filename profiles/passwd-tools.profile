# passwd-tools: the account tools of shadow (useradd, usermod, passwd, ...) change passwd,
# shadow, group and gshadow together or not at all.
description "Each run of an account tool (useradd, usermod, userdel, groupadd, groupmod, groupdel, chpasswd, chgpasswd, newusers, chage, passwd, gpasswd) is one transaction over the files it changes (passwd, shadow, group, gshadow, the home directory it makes): committed when it succeeds, aborted when it fails or is killed. A useradd -m whose home directory cannot be made leaves no user behind."

on exec useradd do begin
on exec usermod do begin
on exec userdel do begin
on exec groupadd do begin
on exec groupmod do begin
on exec groupdel do begin
on exec chpasswd do begin
on exec chgpasswd do begin
on exec newusers do begin
on exec chage do begin
on exec passwd do begin
on exec gpasswd do begin
on exit do commit-if status == 0

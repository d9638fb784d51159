#!/usr/bin/env perl
# Regenerate the build system (configure, Makefile.in) for the out-of-tree build.
use strict;
use warnings;
use FindBin;
chdir $FindBin::Bin or die "cannot enter $FindBin::Bin: $!\n";
for my $tool (qw(autoreconf libtoolize automake autoconf)) {
    system("command -v $tool >/dev/null 2>&1") == 0
        or die "autogen.pl: '$tool' not found; install autoconf, automake and libtool (apt-get install autoconf automake libtool)\n";
}
system("autoreconf", "-fi") == 0 or die "autogen.pl: autoreconf failed\n";
print "autogen.pl: done; now run ./configure\n";

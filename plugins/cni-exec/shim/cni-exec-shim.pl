#!/usr/bin/perl
# kubelet-ts cni-exec shim: the one CNI plugin the container runtime runs. It forwards the
# request (CNI_* environment and the stdin config) to the kubelet over the unix socket named
# by "socket" in its config, prints the kubelet's answer and exits with its code. Only
# perl-base modules (Essential on Debian): it starts in ~20 ms.
use strict;
use warnings;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM SHUT_WR);

binmode STDIN;
binmode STDOUT;
my $stdin = do { local $/; <STDIN> };
$stdin = '' unless defined $stdin;
my ($version) = $stdin =~ /"cniVersion"\s*:\s*"([^"]*)"/;
$version = '1.0.0' unless $version;
my $command = defined $ENV{CNI_COMMAND} ? $ENV{CNI_COMMAND} : '';

sub jstr {
    my ($s) = @_;
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/[\x00-\x1f]/ /g;
    return "\"$s\"";
}

sub fail {
    my ($code, $msg) = @_;
    print '{"cniVersion":' . jstr($version) . ',"code":' . $code . ',"msg":' . jstr($msg) . '}';
    exit 1;
}

if ($command eq 'VERSION') {
    print '{"cniVersion":' . jstr($version) . ',"supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}';
    exit 0;
}

my ($socket) = $stdin =~ /"socket"\s*:\s*"([^"\\]*)"/;
fail(7, 'kubelet-ts cni-exec shim: no "socket" in the network config') unless $socket;
my ($timeout) = $stdin =~ /"timeoutSeconds"\s*:\s*(\d+)/;
$timeout = 300 unless $timeout;

my $conn = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $socket)
    or fail(11, "kubelet-ts is not reachable on $socket ($!): the kubelet that runs pod networking (plugin cni-exec) is not running; start it and the runtime will retry");

my $request = "CNI-EXEC/1\n";
for my $k (sort keys %ENV) {
    next unless $k =~ /^CNI_/;
    my $v = $ENV{$k};
    $v =~ s/\n/ /g;
    $request .= "$k=$v\n";
}
$request .= "\n" . $stdin;

local $SIG{ALRM} = sub { fail(11, "kubelet-ts on $socket did not answer within $timeout s") };
alarm $timeout;
binmode $conn;
print {$conn} $request or fail(11, "kubelet-ts on $socket: write failed: $!");
shutdown($conn, SHUT_WR);
my $answer = do { local $/; <$conn> };
alarm 0;
fail(11, "kubelet-ts on $socket closed the connection without an answer") unless defined $answer && $answer =~ /\A(\d+)\n/;
my $code = $1;
print substr($answer, length($code) + 1);
exit $code;

#!/bin/sh
# Writes the seed corpus of video_fuzz into DIR with Debian's ffmpeg CLI:
# tiny testsrc clips (16x16 to 48x32, 4-12 frames) in the containers and codecs
# VideoClips reads (MP4/H.264 with B-frames, MKV/MPEG-4, WebM/VP9, MP4/H.265,
# a variable frame rate, one frame, audio beside video), each a few KB.
# Generated at fuzz time, never committed. Encoders this ffmpeg lacks are left out.
set -u
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
src() { echo "-f lavfi -i testsrc=size=$1:rate=$2:duration=$3"; }
make() {  # make NAME ARGS...
  name=$1; shift
  ffmpeg -nostdin -v error -y "$@" "$dir/$name" 2>/dev/null || rm -f "$dir/$name"
}
make h264.mp4 $(src 32x24 10 1) -c:v libx264 -pix_fmt yuv420p -g 4
make h264_faststart.mp4 $(src 16x16 8 0.5) -c:v libx264 -pix_fmt yuv420p -g 3 -movflags +faststart
make mpeg4.mkv $(src 48x32 12 1) -c:v mpeg4 -g 5
make vp9.webm $(src 32x24 8 0.5) -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 3
make h265.mp4 $(src 32x32 8 0.5) -c:v libx265 -x265-params log-level=none:keyint=3 -pix_fmt yuv420p
make vfr.mkv $(src 32x24 10 1) -vf "select=lt(mod(n*n\,7)\,4)" -fps_mode vfr -c:v libx264 -pix_fmt yuv420p -g 4
make one.mp4 $(src 16x16 10 1) -frames:v 1 -c:v libx264 -pix_fmt yuv420p
make av.mp4 $(src 16x16 10 0.5) -f lavfi -i sine=duration=0.5 -c:v mpeg4 -c:a aac -shortest
ls "$dir" | wc -l

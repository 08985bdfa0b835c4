! Post-process (per day), 1/2: read the day's history, form the daily mean
! and the end-of-day load, and regrid both conservatively (area-weighted,
! 2 x 2 blocks) onto the output grid (nx/2 x ny/2); then post_work passes of
! a light filter on the mean (the output products' "smoothed" field).
!
!   post_regrid NAMELIST HISTORY OUT
program post_regrid
  use nmmb_io
  implicit none
  real(dp), allocatable :: f(:, :), mean(:, :), last(:, :), om(:, :), ol(:, :), os(:, :)
  integer :: u, o, k, ns, i, j, p, q
  real(dp) :: w, sw, sm, sl
  character(len=16) :: tag
  call need_args(3, 'post_regrid NAMELIST HISTORY OUT')
  call read_namelist(arg(1))
  call open_in(arg(2), u)
  read(u, *) tag, tag, k, tag, ns
  if (ns < 1) call die('post_regrid: the history has no snapshots')
  allocate(mean(nx, ny)); mean = 0
  do k = 1, ns
    call get_field(u, f)
    mean = mean + f / ns
  end do
  close(u)
  last = f
  allocate(om(nx / 2, ny / 2), ol(nx / 2, ny / 2))
  do j = 1, ny / 2
    do i = 1, nx / 2
      sw = 0; sm = 0; sl = 0
      do q = 2 * j - 1, 2 * j
        w = cos(lat(q) * pi / 180.0_dp)
        do p = 2 * i - 1, 2 * i
          sw = sw + w; sm = sm + w * mean(p, q); sl = sl + w * last(p, q)
        end do
      end do
      om(i, j) = sm / sw; ol(i, j) = sl / sw
    end do
  end do
  os = om
  call smooth(os, post_work, 0.05_dp)
  call open_out(arg(3), o)
  call put_field(o, 'load_mean', om)
  call put_field(o, 'load_end', ol)
  call put_field(o, 'load_smooth', os)
  close(o)
end program post_regrid

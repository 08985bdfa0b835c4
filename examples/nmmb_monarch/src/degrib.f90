! Variable step (per day), 1/4: "degrib" the day's records out of the global
! analysis: find the day's four coarse fields, quality-control them (clip to
! physical ranges, fill), run var_work passes of a de-noising filter and
! write them.
!
!   degrib NAMELIST GFS DAY OUT
program degrib
  use nmmb_io
  implicit none
  real(dp), allocatable :: f(:, :)
  integer :: u, o, day, d, k, ndays
  character(len=16) :: tag
  character(len=32) :: want
  character(len=*), parameter :: names(4) = [character(len=8) :: 'u', 'v', 'precip', 'soilw']
  call need_args(4, 'degrib NAMELIST GFS DAY OUT')
  call read_namelist(arg(1))
  day = iarg(3)
  call open_in(arg(2), u)
  read(u, *) tag, tag, ndays
  if (day < 1 .or. day > ndays) call die('degrib: the analysis has no such day')
  call open_out(arg(4), o)
  do d = 1, day
    do k = 1, 4
      write(want, '(a,a,i2.2)') trim(names(k)), '_day', d
      call get_field(u, f, want)
      if (d == day) then
        select case (k)
        case (1, 2)
          f = max(-60.0_dp, min(60.0_dp, f))
        case (3)
          f = max(0.0_dp, f)
        case (4)
          f = max(0.02_dp, min(0.5_dp, f))
        end select
        call smooth(f, var_work, 0.05_dp)
        call put_field(o, names(k), f)
      end if
    end do
  end do
  close(u); close(o)
end program degrib
